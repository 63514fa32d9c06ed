"""What the crowd platforms (``mturk/``, ``prolific/``) share: the call log and its call-once rule
(:mod:`.calls`, on the abstract :class:`.models.CallLog`), the bonus with one status vocabulary
(:class:`.models.Bonus`) and the wage top-up (:mod:`.pay`), and the shape of a sync's result (:mod:`.sync`).

It lives in the engine app because both platform apps may import the engine and neither may import the other; it
imports no platform (a platform passes its own model, error type and lookups in)."""
