package hookhttp

import (
	"testing"

	"github.com/toolgate/toolgate/internal/attest"
)

func TestAttestationHeader(t *testing.T) {
	a := attest.Attestation{BootID: "b00t", Device: 65024, Inode: 1 << 40}
	dir := "/home/dev/a project/with&odd=chars"
	h := EncodeAttestation(dir, a)
	other := EncodeAttestation("/elsewhere", attest.Attestation{BootID: "x", Device: 1, Inode: 2})
	if got, ok := ParseAttestation([]string{other, h}, dir); !ok || got != a {
		t.Errorf("ParseAttestation = %+v, %v; want %+v", got, ok, a)
	}
	for name, values := range map[string][]string{
		"another directory": {other},
		"none":              nil,
		"bad inode":         {"dir=%2Fp&boot_id=b&dev=1&ino=-2"},
		"no boot id":        {"dir=%2Fp&dev=1&ino=2"},
	} {
		if got, ok := ParseAttestation(values, "/p"); ok {
			t.Errorf("%s: ParseAttestation = %+v, true; want none", name, got)
		}
	}
	if _, ok := ParseAttestation([]string{h}, ""); ok {
		t.Error("an attestation for no working directory")
	}
}
