/* stub */
#ifndef X_kh_proto
#define X_kh_proto
#endif
