"""LLM providers behind one small client interface, with accounting and a replay backend."""
