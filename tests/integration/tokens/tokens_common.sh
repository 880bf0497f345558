# tests/integration/tokens/tokens_common.sh — what the real-token tests share
# (piv.sh, ykcs11.sh, tpm.sh): source it after tap.sh, users.sh and pki.sh.
#
#   tokens_pamtester                    PT: the pamtester command line (PT_ENV:
#                                       its environment part), with an
#                                       EMPTY environment (as sshd's auth child
#                                       has) and without a controlling
#                                       terminal (setsid): a module that needs
#                                       a variable gets it from pkcs11.env or
#                                       not at all, and a library that tried to
#                                       read a terminal would find none
#   pt SERVICE USER PIN OPS...          run it; $rc, $out, $err
#   tokens_service NAME POLICY          /etc/pam.d/NAME (removed at exit)
#   tokens_policy FILE KEY=VALUE...     a root-owned policy for a user module:
#       module=  env= (the pkcs11.env group's inside)  token= (the token
#       section's inside)  map= (uid)  trust= (more of trust)
#       issuer= (the issuer section's inside; default: the SoftHSM issuer
#       token $ISSUER_LABEL with SOFTHSM2_CONF in issuer.env)
#       cache_pin= (false)  signer= (session)  groups= ("static:dev")
#   oneline TEXT                        newlines as " | "

tokens_pamtester() {
	# An ASan-built module loads only after the ASan runtime; leak checking
	# of pamtester and libpam themselves is off (the module's own leaks are
	# checked by pam_valgrind.sh and the ASan build's probes).
	PT_ASAN=()
	if nm -D "$PAM_KUBEHSM" 2>/dev/null | grep -q __asan_init; then
		PT_ASAN=(LD_PRELOAD="$(gcc -print-file-name=libasan.so)"
			ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
	fi
	PT_ENV=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${PT_ASAN[@]}")
	PT=("${PT_ENV[@]}" setsid -w timeout 180 pamtester)
}

pt() {
	local svc=$1 user=$2 pin=$3
	shift 3
	run "${PT[@]}" "$svc" "$user" "$@" <<<"$pin"
}

oneline() { tr '\n' '|' <<<"$1" | sed 's/|/ | /g'; }

tokens_service() {
	pam_service_file "/etc/pam.d/$1" "config=$2"
	on_exit "rm -f '/etc/pam.d/$1'"
}

tokens_policy() {
	local file=$1 kv module="" env="" token="" map=uid trust="" cache_pin=false
	local signer=session groups='"static:dev"' issuer=""
	shift
	for kv in "$@"; do
		case $kv in
		module=*) module=${kv#*=} ;;
		env=*) env=${kv#*=} ;;
		token=*) token=${kv#*=} ;;
		map=*) map=${kv#*=} ;;
		trust=*) trust=${kv#*=} ;;
		cache_pin=*) cache_pin=${kv#*=} ;;
		signer=*) signer=${kv#*=} ;;
		groups=*) groups=${kv#*=} ;;
		issuer=*) issuer=${kv#*=} ;;
		*) echo "tokens_policy: unknown setting '$kv'" >&2; return 1 ;;
		esac
	done
	[ -n "$issuer" ] || issuer="key = \"pkcs11:token=$ISSUER_LABEL;object=issuer\";
  module = \"$PKI_MODULE\"; env = { SOFTHSM2_CONF = \"$SOFTHSM2_CONF\"; };
  cert_file = \"$PKI_DIR/issuer.pem\"; pin_file = \"$PKI_DIR/issuer.pin\";"
	mkdir -p -m 0755 "$(dirname "$file")" || return 1
	cat >"$file" <<CONF || return 1
version = 1;
pkcs11 = { module = "$module"; env = { $env }; };
token = { $token };
trust = { ca_file = "$PKI_DIR/users.pem"; map = "$map"; $trust };
identity = { username = "%u"; groups = [ $groups ]; };
issuer = { $issuer };
session = { ttl = "1h"; scope = "user"; revoke_on_logout = true; cache_pin = $cache_pin; };
signer = { key = "$signer"; };
polkit = { mode = "off"; };
CONF
	chmod 0644 "$file"
}
