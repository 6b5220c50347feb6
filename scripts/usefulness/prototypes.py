"""Prototypes of changes to rmld's sampler, in numpy (filled in as directions are tried)."""

PROTOTYPES = {}
