"""The demo gym and the scripted model, as the run tests serve them."""

from tests.run.conftest import gym, model  # noqa: F401  (fixtures)
