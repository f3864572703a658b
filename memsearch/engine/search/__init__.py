"""Search: query analysis, the keyword and vector legs, fusion and hits."""
