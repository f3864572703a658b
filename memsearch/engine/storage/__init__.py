"""Storage: the LanceDB tables, their locks, remote homes and damage checks."""
