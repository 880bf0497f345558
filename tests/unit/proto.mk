# tests/unit/proto.mk
