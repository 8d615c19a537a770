"""The hook registry, as in Proton's ``triton.profiler.hooks.hook``: hooks
belong to sessions; a hook is active while any of its sessions is active;
the manager's enter/exit/init_handle are installed in Triton's
``knobs.runtime`` hook chains while at least one hook is active. Triton is
imported only when a hook is registered."""
from abc import abstractmethod
from collections import defaultdict
from typing import Any, Dict, Optional

from .. import _cproton


def _runtime_knobs():
    import triton.knobs as knobs
    return knobs.runtime


class Hook:
    priority: int = 0

    @abstractmethod
    def init_handle(self, module: Any, function: Any, name: str, metadata_group: Dict[str, str],
                    hash: str) -> None:  # noqa: D401
        raise NotImplementedError

    def destroy_handle(self, module: Any, function: Any, name: str, metadata_group: Dict[str, str],
                       hash: str) -> None:
        """Proton 3.9: a kernel was unloaded (Triton 3.9's kernel_unload_hook)."""

    @abstractmethod
    def enter(self, metadata) -> None:
        raise NotImplementedError

    @abstractmethod
    def exit(self, metadata) -> None:
        raise NotImplementedError

    @abstractmethod
    def activate(self) -> None:
        raise NotImplementedError

    @abstractmethod
    def deactivate(self) -> None:
        raise NotImplementedError


class HookManager:
    # active hooks, highest priority first
    active_hooks: list = []
    # session id -> (hook -> active)
    session_hooks: Dict[int, Dict[Hook, bool]] = defaultdict(lambda: defaultdict(bool))
    _installed = False
    # (chain, function) pairs added to Triton's hook chains
    _chained: list = []
    # Triton hook chains whose loop runs in C (_cproton.fast_chain)
    _fast: list = []

    @staticmethod
    def _rechain() -> None:
        """Puts the right functions in Triton's hook chains: with a single
        active hook, its own enter/exit (a launch then costs one call, not a
        Python loop over hooks); with several, the manager's fan-out."""
        for chain, fn in HookManager._chained:
            chain.remove(fn)
        HookManager._chained = []
        if not HookManager._installed:
            for chain in HookManager._fast:  # Triton's chains as found
                _cproton.fast_chain(chain, False)
            HookManager._fast = []
            return  # no hook: Triton is not needed (nor imported)
        rt = _runtime_knobs()
        hooks = HookManager.active_hooks
        enter, exit_ = ((hooks[0].enter, hooks[0].exit) if len(hooks) == 1 else
                        (HookManager.enter, HookManager.exit))
        chains = [(rt.kernel_load_end_hook, HookManager.init_handle), (rt.launch_enter_hook, enter),
                  (rt.launch_exit_hook, exit_)]
        if hasattr(rt, "kernel_unload_hook"):  # Triton 3.9+
            chains.append((rt.kernel_unload_hook, HookManager.destroy_handle))
        for chain, fn in chains:
            chain.add(fn)
            HookManager._chained.append((chain, fn))
        # The launch chains run around every launch: their loop in C
        # (_hookchain.c), the same calls in the same order.
        for chain in (rt.launch_enter_hook, rt.launch_exit_hook):
            if chain not in HookManager._fast and _cproton.fast_chain(chain, True):
                HookManager._fast.append(chain)

    @staticmethod
    def init_handle(module: Any, function: Any, name: str, metadata_group: Dict[str, str], hash: str) -> None:
        for hook in HookManager.active_hooks:
            hook.init_handle(module, function, name, metadata_group, hash)

    @staticmethod
    def destroy_handle(module: Any, function: Any, name: str, metadata_group: Dict[str, str], hash: str) -> None:
        for hook in reversed(HookManager.active_hooks):
            hook.destroy_handle(module, function, name, metadata_group, hash)

    @staticmethod
    def enter(metadata) -> None:
        for hook in HookManager.active_hooks:
            hook.enter(metadata)

    @staticmethod
    def exit(metadata) -> None:
        # first in, last out
        for hook in reversed(HookManager.active_hooks):
            hook.exit(metadata)

    @staticmethod
    def _sort() -> None:
        HookManager.active_hooks.sort(key=lambda h: h.priority, reverse=True)

    @staticmethod
    def _sessions(session: Optional[int]):
        return list(HookManager.session_hooks.keys()) if session is None else [session]

    @staticmethod
    def activate(session: Optional[int] = None) -> None:
        for s in HookManager._sessions(session):
            if s not in HookManager.session_hooks:
                continue
            for hook in HookManager.session_hooks[s]:
                if hook not in HookManager.active_hooks:
                    hook.activate()
                    HookManager.active_hooks.append(hook)
                HookManager.session_hooks[s][hook] = True
        HookManager._sort()
        HookManager._rechain()

    @staticmethod
    def deactivate(session: Optional[int] = None) -> None:
        off = set()
        for s in HookManager._sessions(session):
            if s not in HookManager.session_hooks:
                continue
            for hook in HookManager.session_hooks[s]:
                if hook in HookManager.active_hooks:
                    off.add(hook)
                HookManager.session_hooks[s][hook] = False
        for hook in off:
            if not any(hooks.get(hook) for hooks in HookManager.session_hooks.values()):
                hook.deactivate()
                HookManager.active_hooks.remove(hook)
        HookManager._rechain()

    @staticmethod
    def register(hook: Hook, session: int) -> None:
        HookManager.session_hooks[session][hook] = True
        if hook not in HookManager.active_hooks:
            hook.activate()
            HookManager.active_hooks.append(hook)
        HookManager._sort()
        HookManager._installed = True
        HookManager._rechain()

    @staticmethod
    def unregister(session: Optional[int] = None) -> None:
        if session is not None and session not in HookManager.session_hooks:
            return
        if session is None:
            for hook in HookManager.active_hooks:
                hook.deactivate()
            HookManager.active_hooks.clear()
            HookManager.session_hooks.clear()
        else:
            popped = HookManager.session_hooks.pop(session)
            for hook, active in popped.items():
                if active and hook in HookManager.active_hooks and not any(
                        hooks.get(hook) for hooks in HookManager.session_hooks.values()):
                    hook.deactivate()
                    HookManager.active_hooks.remove(hook)
        if not HookManager.active_hooks and HookManager._installed:
            HookManager._installed = False
        HookManager._rechain()
