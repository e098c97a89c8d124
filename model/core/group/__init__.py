"""The group coordinator: share groups (KIP-932) and KIP-848 consumer groups, pure."""
