# tests/integration/token.mk
