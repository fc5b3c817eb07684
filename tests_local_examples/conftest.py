"""The examples and README samples on the embedded default model (``tox -e local-examples``)."""
