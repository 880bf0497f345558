# tests/integration/config.mk
