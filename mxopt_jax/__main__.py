"""``python -m mxopt_jax compare``: the main job (see :mod:`mxopt_jax.compare`)."""

import sys

from .compare import main

sys.exit(main())
