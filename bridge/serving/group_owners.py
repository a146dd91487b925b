"""Who holds a batch group: the client whose session opened it first, until the group's last session
ends. The bridge keeps one (its own sessions) and so does the front end of `serve --workers` (the groups
across its workers: it places opens by load, so a worker alone cannot tell)."""

from __future__ import annotations

from typing import Generic, TypeVar

G = TypeVar("G")  # a group's name
C = TypeVar("C")  # a client


class GroupOwners(Generic[G, C]):
    def __init__(self) -> None:
        self._held: dict[G, tuple[C, int]] = {}  # group -> (its owner, its open sessions)

    def __contains__(self, group: G) -> bool:
        return group in self._held

    def owner(self, group: G) -> C | None:
        held = self._held.get(group)
        return None if held is None else held[0]

    def add(self, group: G, owner: C) -> None:
        """One more open session in `group`; the first makes it `owner`'s."""
        holder, held = self._held.get(group, (owner, 0))
        self._held[group] = (holder, held + 1)

    def remove(self, group: G) -> None:
        """One session of `group` ended; after its last the group is nobody's."""
        holder, held = self._held[group]
        if held > 1:
            self._held[group] = (holder, held - 1)
        else:
            del self._held[group]
