"""Tightness: how loose a certificate is -- worst neighbouring pairs, the most powerful pair test,
exact profiles of functional releases, the tightness table of a game setting."""
