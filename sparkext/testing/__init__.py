"""Testing helpers for sparkext users and for sparkext itself: a shared local session,
plan normalisation, golden plan snapshots and plan diffs."""
