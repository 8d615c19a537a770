# ruff: noqa
from .hook import Hook, HookManager
from .instrumentation import InstrumentationHook
from .launch import LaunchHook
