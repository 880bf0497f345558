#include "config.h"
#include "kh_sign.h"
