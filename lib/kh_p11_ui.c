/*
 * kh_p11_ui — see kh_p11_ui.h.
 */
#include "config.h"

#include <stddef.h>

#include <openssl/ui.h>

#include "lib/kh_p11_ui.h"

/* Prompts and verifications get the handle's PIN; an info or error line
 * needs no answer; anything else (a yes/no question) is refused. */
static int
kh_ui_read(UI *ui, UI_STRING *uis)
{
	char *const *pin = UI_get0_user_data(ui);

	switch (UI_get_string_type(uis)) {
	case UIT_PROMPT:
	case UIT_VERIFY:
		if (pin == NULL || *pin == NULL)
			return 0;
		return UI_set_result(ui, uis, *pin) == 0 ? 1 : 0;
	case UIT_INFO:
	case UIT_ERROR:
		return 1;
	default:
		return 0;
	}
}

/* Nothing is shown to anyone: the prompt text would name a key to a
 * terminal that is not this login's. */
static int
kh_ui_write(UI *ui, UI_STRING *uis)
{
	(void)ui;
	(void)uis;
	return 1;
}

UI_METHOD *
kh_p11_ui_method_new(void)
{
	UI_METHOD *m = UI_create_method("kubehsm: the PIN of this login");

	if (m == NULL)
		return NULL;
	if (UI_method_set_reader(m, kh_ui_read) != 0 ||
	    UI_method_set_writer(m, kh_ui_write) != 0) {
		UI_destroy_method(m);
		return NULL;
	}
	return m;
}
