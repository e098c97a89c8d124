"""TLA+ specifications of share groups and the KIP-848 protocol, and their TLC runner (tla/README.md)."""
