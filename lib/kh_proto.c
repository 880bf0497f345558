#include "config.h"
#include "kh_proto.h"
