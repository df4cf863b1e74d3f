"""Pykka actors: the single owners of control-plane state, fed by events."""
