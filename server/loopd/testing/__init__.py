"""Test doubles and fakes shipped with loopd, for its own tests and for anyone
building on it: the loopback fake LLM server speaking the real wire formats, a fake
clock, recording emitters, scripted providers and approvers."""
