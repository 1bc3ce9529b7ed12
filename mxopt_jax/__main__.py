"""``python -m mxopt_jax compare``: the comparison app's command line (:mod:`mxopt_jax.compare.cli`)."""

import sys

from .compare.cli import main

sys.exit(main())
