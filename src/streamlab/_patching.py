"""The one registry of what streamlab replaces outside itself.

Every attribute that streamlab sets on numba's modules and classes, on the simulator's,
on ``threading.Thread`` and on IPython's shell goes through :func:`patch` (or
:func:`remember`, for a change that a library's own setter makes), every entry it puts in
a mapping (``sys.modules["cuda.core"]``, on the simulator) through :func:`patch_item`,
and :func:`undo_all` puts each one back as it was, an attribute or entry that was absent
removed again. ``streamlab.uninstall()`` calls it. Nothing here knows what a patch is for.

A :class:`Registry` of its own keeps an example apart from streamlab's patches:

>>> import types
>>> box = types.SimpleNamespace(kept=1)
>>> registry = Registry()
>>> registry.patch(box, "kept", 2); registry.patch(box, "added", 3)
>>> (box.kept, box.added)
(2, 3)
>>> registry.undo_all(); (box.kept, hasattr(box, "added"))
(1, False)
"""

from __future__ import annotations

import sys

_ABSENT = object()


def _own(owner, name: str):
    """``owner``'s own value for ``name`` (not one it inherits), or _ABSENT."""
    try:
        return vars(owner).get(name, _ABSENT)
    except TypeError:  # an object without a __dict__
        return getattr(owner, name, _ABSENT)


class Registry:
    """What was replaced, in order, and how to put it back."""

    def __init__(self):
        self._undo: list[tuple[object, object, object, bool]] = []  # (owner, name, was, item?)

    def remember(self, owner, name: str) -> None:
        """Note ``owner.name`` as it is now, to be put back by :meth:`undo_all`."""
        self._undo.append((owner, name, _own(owner, name), False))

    def patch_item(self, mapping, key, value) -> None:
        """Set ``mapping[key] = value``, noting what was there."""
        self._undo.append((mapping, key, mapping.get(key, _ABSENT), True))
        mapping[key] = value

    def patch(self, owner, name: str, value) -> None:
        """Set ``owner.name = value``, noting what was there."""
        self.remember(owner, name)
        setattr(owner, name, value)

    def patch_everywhere(self, original, replacement, prefix: str = "numba.cuda") -> None:
        """Replace ``original`` by ``replacement`` in every loaded module under ``prefix``
        that holds it (a function that other modules imported by name)."""
        for modname, mod in list(sys.modules.items()):
            if mod is None or not (modname == prefix or modname.startswith(prefix + ".")):
                continue
            for attr, value in list(vars(mod).items()):
                if value is original:
                    self.patch(mod, attr, replacement)

    def undo_all(self) -> None:
        """Put back everything noted, the latest first."""
        while self._undo:
            owner, name, original, item = self._undo.pop()
            if item:
                if original is _ABSENT:
                    owner.pop(name, None)
                else:
                    owner[name] = original
            elif original is _ABSENT:
                if name in getattr(owner, "__dict__", {}):
                    delattr(owner, name)
            else:
                setattr(owner, name, original)

    def patched(self) -> list[tuple[object, str]]:
        """What is replaced now, in the order it was: (owner, attribute name) pairs."""
        return [(owner, name) for owner, name, _, _ in self._undo]


_streamlab = Registry()  # streamlab's own: the one uninstall() empties
remember = _streamlab.remember
patch = _streamlab.patch
patch_item = _streamlab.patch_item
patch_everywhere = _streamlab.patch_everywhere
undo_all = _streamlab.undo_all
patched = _streamlab.patched


def wrap_attribute(owner, name: str, make, wrap=None) -> None:
    """Replace ``owner.name`` with ``make(original)`` (passed through ``wrap`` if given:
    :func:`streamlab.ops.timed`, say), in streamlab's registry."""
    made = make(getattr(owner, name))
    patch(owner, name, wrap(made) if wrap is not None else made)
