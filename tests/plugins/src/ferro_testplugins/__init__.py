"""Test plugins for ferro's plugin manager (see the README of this distribution)."""
