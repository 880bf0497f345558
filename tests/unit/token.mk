# tests/unit/token.mk
