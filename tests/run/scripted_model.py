"""The scripted model server the run tests use: :class:`eog_core.local.ScriptedModel`."""

from eog_core.local import FINAL_TEXT, CutOff, ModelFault, ScriptedModel, demo_scripts

__all__ = ["FINAL_TEXT", "CutOff", "ModelFault", "ScriptedModel", "demo_scripts"]
