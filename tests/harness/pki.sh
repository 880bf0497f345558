# tests/harness/pki.sh — certificates and SoftHSM2 tokens for integration tests.
#
# Source it after tests/harness/tap.sh (it needs $KH_TMP), then call pki_init.
# Everything lives under $PKI_DIR: CAs (openssl ca databases, so certificates
# can be revoked and CRLs issued), user keys and certificates, and a private
# SoftHSM2 token store exported through SOFTHSM2_CONF — no test touches the
# machine's own tokens.  EC P-256 keys by default because they are fast.
#
#   pki_init [DIR]                      token store + CA area (default $KH_TMP/pki)
#   pki_ca NAME [CN] [ec|rsa]           self-signed CA: $PKI_DIR/NAME.pem, NAME.key
#   pki_user_cert NAME CA [options]     key NAME.key + cert NAME.pem signed by CA
#       --cn CN  --o O (repeatable)  --ou OU (repeatable)  --uid UID
#       --email ADDR (SAN)  --email-attr ADDR (subject)  --upn UPN (SAN)
#       --days N  --not-before YYYYMMDDHHMMSSZ  --not-after YYYYMMDDHHMMSSZ
#       --type ec|rsa  --eku clientAuth|serverAuth|none  --ku LIST|none
#       --ca-cert (issue a CA:TRUE certificate, for issuers)
#       --pubkey FILE (certify this public key instead of NAME.key)
#   pki_revoke CA NAME                  revoke NAME.pem and reissue CA.crl
#   pki_crl CA                          (re)issue $PKI_DIR/CA.crl
#   pki_token_init LABEL PIN [SO-PIN]   fresh token (SO PIN defaults to 12345678)
#   pki_token_import LABEL PIN NAME OBJLABEL ID
#                                       key pair NAME.key + cert NAME.pem onto it
#   pki_token_keygen LABEL PIN OBJLABEL ID [ec|rsa]
#                                       key pair generated on the token; public
#                                       key written to $PKI_DIR/LABEL-OBJLABEL.pub.pem
#   pki_token_import_cert LABEL PIN CERTFILE OBJLABEL ID
#   pki_issuer_token LABEL PIN CA [NAME] [ec|rsa|ec384]
#                                       host issuer: key + CA-signed issuer cert
#                                       (NAME.pem), on token LABEL as object
#                                       "issuer" id 01, PIN in NAME.pin (0600)
#   pki_token_serial LABEL              the token's serial number
#   pki_token_dir LABEL                 the token's directory in the store
#   pki_token_give LABEL USER           hand a token to a (non-root) user
#   pki_p11tool ARGS...                 pkcs11-tool on the SoftHSM module

PKI_MODULE=${PKI_MODULE:-/usr/lib/softhsm/libsofthsm2.so}
PKI_SO_PIN=${PKI_SO_PIN:-12345678}

_pki_die() { echo "pki.sh: $*" >&2; return 1; }

# _pki_q CMD...: run quietly, show the output only when it fails.
_pki_q() {
	local o
	if ! o=$("$@" 2>&1); then
		echo "pki.sh: failed: $*" >&2
		echo "$o" >&2
		return 1
	fi
}

pki_init() {
	PKI_DIR=${1:-$KH_TMP/pki}
	mkdir -p "$PKI_DIR/tokens" || return 1
	# Non-root test users must reach their own token (see pki_token_give).
	chmod 0755 "$PKI_DIR" "$PKI_DIR/tokens"
	printf 'directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n' \
		"$PKI_DIR/tokens" >"$PKI_DIR/softhsm2.conf"
	chmod 0644 "$PKI_DIR/softhsm2.conf"
	SOFTHSM2_CONF=$PKI_DIR/softhsm2.conf
	export PKI_DIR SOFTHSM2_CONF PKI_MODULE
}

_pki_genkey() {   # _pki_genkey OUT ec|ec384|rsa
	case $2 in
	ec)    _pki_q openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" ;;
	ec384) _pki_q openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$1" ;;
	rsa)   _pki_q openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" ;;
	*)     _pki_die "unknown key type '$2'" ;;
	esac && chmod 0600 "$1"
}

pki_ca() {
	local name=$1 cn=${2:-$1} type=${3:-ec} d=$PKI_DIR/$1.ca
	[ -n "$PKI_DIR" ] || _pki_die "call pki_init first" || return 1
	rm -rf "$d"; mkdir -p "$d/new" || return 1
	: >"$d/index.txt"
	echo 1000 >"$d/crlnumber"
	cat >"$d/ca.cnf" <<EOF
[ ca ]
default_ca = kh
[ kh ]
dir = $d
database = $d/index.txt
new_certs_dir = $d/new
certificate = $PKI_DIR/$name.pem
private_key = $PKI_DIR/$name.key
crlnumber = $d/crlnumber
default_md = sha256
default_crl_days = 30
policy = any
unique_subject = no
rand_serial = yes
[ any ]
commonName = optional
[ req ]
distinguished_name = dn
[ dn ]
[ v3_ca ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
EOF
	_pki_genkey "$PKI_DIR/$name.key" "$type" || return 1
	_pki_q openssl req -new -x509 -config "$d/ca.cnf" -extensions v3_ca \
		-key "$PKI_DIR/$name.key" -subj "/CN=$cn" -days 3650 -sha256 \
		-out "$PKI_DIR/$name.pem" || return 1
	chmod 0644 "$PKI_DIR/$name.pem"
	pki_crl "$name"
}

pki_crl() {
	local d=$PKI_DIR/$1.ca
	_pki_q openssl ca -batch -config "$d/ca.cnf" -gencrl -out "$PKI_DIR/$1.crl" &&
		chmod 0644 "$PKI_DIR/$1.crl"
}

pki_revoke() {
	local d=$PKI_DIR/$1.ca
	_pki_q openssl ca -batch -config "$d/ca.cnf" -revoke "$PKI_DIR/$2.pem" &&
		pki_crl "$1"
}

pki_user_cert() {
	local name=$1 ca=$2; shift 2
	local subj="" san="" days=365 nb="" na="" type=ec eku=clientAuth
	local ku="critical,digitalSignature" cacert=0 pubkey="" v
	local d=$PKI_DIR/$ca.ca ext csr tmpkey
	[ -f "$d/ca.cnf" ] || _pki_die "no CA '$ca' (pki_ca first)" || return 1
	while [ $# -gt 0 ]; do
		v=$2
		case $1 in
		--cn)         subj="$subj/CN=$v" ;;
		--o)          subj="$subj/O=$v" ;;
		--ou)         subj="$subj/OU=$v" ;;
		--uid)        subj="$subj/UID=$v" ;;
		--email-attr) subj="$subj/emailAddress=$v" ;;
		--email)      san="${san:+$san,}email:$v" ;;
		--upn)        san="${san:+$san,}otherName:msUPN;UTF8:$v" ;;
		--days)       days=$v ;;
		--not-before) nb=$v ;;
		--not-after)  na=$v ;;
		--type)       type=$v ;;
		--eku)        eku=$v ;;
		--ku)         ku=$v ;;
		--pubkey)     pubkey=$v ;;
		--ca-cert)    cacert=1; shift; continue ;;
		*)            _pki_die "pki_user_cert: unknown option '$1'"; return 1 ;;
		esac
		shift 2
	done
	[ -n "$subj" ] || subj="/CN=$name"
	ext=$PKI_DIR/$name.ext
	{
		echo "[ ext ]"
		if [ $cacert = 1 ]; then
			echo "basicConstraints = critical,CA:TRUE,pathlen:0"
			echo "keyUsage = critical,digitalSignature,keyCertSign,cRLSign"
		else
			echo "basicConstraints = critical,CA:FALSE"
			[ "$ku" = none ] || echo "keyUsage = $ku"
			[ "$eku" = none ] || echo "extendedKeyUsage = $eku"
		fi
		echo "subjectKeyIdentifier = hash"
		echo "authorityKeyIdentifier = keyid"
		[ -z "$san" ] || echo "subjectAltName = $san"
	} >"$ext"
	csr=$PKI_DIR/$name.csr
	if [ -n "$pubkey" ]; then
		# The key lives on a token: a throw-away key signs the request and
		# openssl x509 -force_pubkey certifies the token's public key.
		tmpkey=$PKI_DIR/$name.tmpkey
		_pki_genkey "$tmpkey" ec || return 1
		_pki_q openssl req -new -config "$d/ca.cnf" -key "$tmpkey" \
			-subj "$subj" -out "$csr" || return 1
		_pki_q openssl x509 -req -in "$csr" -CA "$PKI_DIR/$ca.pem" \
			-CAkey "$PKI_DIR/$ca.key" -force_pubkey "$pubkey" \
			-extfile "$ext" -extensions ext -days "$days" -sha256 \
			-set_serial "0x$(openssl rand -hex 16)" -out "$PKI_DIR/$name.pem" || return 1
		rm -f "$tmpkey"
	else
		_pki_genkey "$PKI_DIR/$name.key" "$type" || return 1
		_pki_q openssl req -new -config "$d/ca.cnf" -key "$PKI_DIR/$name.key" \
			-subj "$subj" -out "$csr" || return 1
		# openssl ca (not x509 -req) so that explicit, even past, validity
		# windows can be set and the certificate can later be revoked.
		_pki_q openssl ca -batch -notext -preserveDN -config "$d/ca.cnf" \
			-in "$csr" -out "$PKI_DIR/$name.pem" -extfile "$ext" -extensions ext \
			${nb:+-startdate "$nb"} ${na:+-enddate "$na"} \
			$([ -n "$na" ] || echo "-days $days") || return 1
	fi
	chmod 0644 "$PKI_DIR/$name.pem"
	rm -f "$csr"
}

pki_p11tool() { pkcs11-tool --module "$PKI_MODULE" "$@"; }

pki_token_init() {
	local label=$1 pin=$2 so=${3:-$PKI_SO_PIN} dir
	# Re-initialising a label the store already holds would create a
	# second token of that name: drop the old one first.
	dir=$(pki_token_dir "$label") && [ -n "$dir" ] && rm -rf "$dir"
	_pki_q softhsm2-util --init-token --free --label "$label" --so-pin "$so" --pin "$pin"
}

pki_token_import() {   # LABEL PIN NAME OBJLABEL ID
	local label=$1 pin=$2 name=$3 obj=$4 id=$5 p8=$PKI_DIR/$3.p8
	_pki_q openssl pkcs8 -topk8 -nocrypt -in "$PKI_DIR/$name.key" -out "$p8" || return 1
	chmod 0600 "$p8"
	_pki_q softhsm2-util --import "$p8" --token "$label" --label "$obj" --id "$id" --pin "$pin"
	local rc=$?
	rm -f "$p8"
	[ $rc -eq 0 ] || return 1
	pki_token_import_cert "$label" "$pin" "$PKI_DIR/$name.pem" "$obj" "$id"
}

pki_token_import_cert() {   # LABEL PIN CERTFILE OBJLABEL ID
	local der=$PKI_DIR/.import.$$.der
	_pki_q openssl x509 -in "$3" -outform DER -out "$der" || return 1
	_pki_q pki_p11tool --token-label "$1" --login --pin "$2" --write-object "$der" \
		--type cert --label "$4" --id "$5"
	local rc=$?
	rm -f "$der"
	return $rc
}

pki_token_keygen() {   # LABEL PIN OBJLABEL ID [ec|rsa]
	local kt=EC:prime256v1
	[ "${5:-ec}" = rsa ] && kt=rsa:2048
	_pki_q pki_p11tool --token-label "$1" --login --pin "$2" --keypairgen \
		--key-type "$kt" --label "$3" --id "$4" --usage-sign || return 1
	local der=$PKI_DIR/$1-$3.pub.der
	_pki_q pki_p11tool --token-label "$1" --read-object --type pubkey --id "$4" \
		--output-file "$der" || return 1
	_pki_q openssl pkey -pubin -inform DER -in "$der" -out "$PKI_DIR/$1-$3.pub.pem"
	local rc=$?
	rm -f "$der"
	return $rc
}

pki_issuer_token() {   # LABEL PIN CA [NAME] [ec|rsa|ec384]
	local label=$1 pin=$2 ca=$3 name=${4:-issuer} type=${5:-ec}
	pki_user_cert "$name" "$ca" --cn "kubehsm issuer $label" --ca-cert --type "$type" || return 1
	pki_token_init "$label" "$pin" || return 1
	pki_token_import "$label" "$pin" "$name" issuer 01 || return 1
	(umask 077; printf '%s\n' "$pin" >"$PKI_DIR/$name.pin")
}

# The token's directory: SoftHSM keeps one directory per token, named by a
# UUID whose last two groups are the token's serial number.
# pki_policy FILE ISSUER_TOKEN [NAME=VALUE...]: a policy for the tokens and
# CAs made here, root-owned 0644 in a 0755 directory as the loader requires.
# Settings and defaults: module=$PKI_MODULE (the users' tokens),
# issuer_module=$PKI_MODULE (the issuer's: the real SoftHSM whatever module
# says), issuer_env= (libconfig settings for issuer.env, e.g. 'A = "1";'),
# pin_file=$PKI_DIR/issuer.pin, groups='"cert:O"', cache_pin=false,
# polkit=off.
pki_policy() {
	local file=$1 issuer=$2 kv
	local module=$PKI_MODULE pin_file=$PKI_DIR/issuer.pin groups='"cert:O"'
	local cache_pin=false polkit=off issuer_module=$PKI_MODULE issuer_env= env_line=
	shift 2
	for kv in "$@"; do
		case $kv in
		module=*) module=${kv#*=} ;;
		issuer_module=*) issuer_module=${kv#*=} ;;
		issuer_env=*) issuer_env=${kv#*=} ;;
		pin_file=*) pin_file=${kv#*=} ;;
		groups=*) groups=${kv#*=} ;;
		cache_pin=*) cache_pin=${kv#*=} ;;
		polkit=*) polkit=${kv#*=} ;;
		*) echo "pki_policy: unknown setting '$kv'" >&2; return 1 ;;
		esac
	done
	[ -n "$issuer_env" ] && env_line=" env = { $issuer_env };"
	mkdir -p -m 0755 "$(dirname "$file")" || return 1
	cat >"$file" <<CONF || return 1
version = 1;
pkcs11 = { module = "$module"; };
token = { label = "%u"; key_label = "kube"; };
trust = { ca_file = "$PKI_DIR/users.pem"; map = "cn"; };
identity = { username = "%u"; groups = [ $groups ]; };
issuer = { key = "pkcs11:token=$issuer;object=issuer"; module = "$issuer_module";
           cert_file = "$PKI_DIR/issuer.pem"; pin_file = "$pin_file";
           key_type = "ec-p256";$env_line };
session = { ttl = "1h"; scope = "user"; revoke_on_logout = true; cache_pin = $cache_pin; };
polkit = { mode = "$polkit"; };
CONF
	chmod 0644 "$file"
}

pki_token_serial() {
	pki_p11tool --list-token-slots 2>/dev/null | awk -v l="$1" '
		/token label/ { sub(/^[^:]*: /, ""); cur = $0 }
		/serial num/ && cur == l { sub(/^[^:]*: /, ""); print; exit }'
}

pki_token_dir() {
	local serial d
	serial=$(pki_token_serial "$1")
	[ -n "$serial" ] || return 0
	for d in "$PKI_DIR"/tokens/*-"${serial:0:4}"-"${serial:4}"; do
		[ -d "$d" ] && echo "$d"
	done
	return 0
}

# Hand a token to a user: SoftHSM opens token files read-write, so the
# token's directory and files must belong to the user who uses it.
pki_token_give() {
	local dir
	dir=$(pki_token_dir "$1")
	[ -n "$dir" ] || _pki_die "no token '$1'" || return 1
	chown -R "$2" "$dir"
}
