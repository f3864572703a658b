"""The Agent Memory layer: the tree model, one file reader, the harness contract, the validator, token counts."""
