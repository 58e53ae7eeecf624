"""Python-code tooling for AutoGraph: parsing, node builders, names and static analysis."""
