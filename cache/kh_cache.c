#include "config.h"
/* placeholder: implemented in its own commit */
extern int kh_placeholder_kh_cache;
