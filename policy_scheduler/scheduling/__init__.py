"""The scheduling cycle shared by ``run`` and the offline commands (:mod:`.cycle`)."""
