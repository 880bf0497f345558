/* stub */
#ifndef X_kh_sign
#define X_kh_sign
#endif
