package group

import (
	"testing"

	"github.com/kiggy-io/kiggy/wire"
)

// TestErrorCodesMatchWire cross-checks the coordinator's codes with package
// wire's (imported by this test only: the coordinator itself stays
// wire-agnostic).
func TestErrorCodesMatchWire(t *testing.T) {
	codes := []struct {
		got  int16
		want wire.ErrorCode
	}{
		{errNone, wire.NoError},
		{errCoordinatorNotAvailable, wire.CoordinatorNotAvailable},
		{errNotCoordinator, wire.NotCoordinator},
		{errIllegalGeneration, wire.IllegalGeneration},
		{errInconsistentGroupProtocol, wire.InconsistentGroupProtocol},
		{errInvalidGroupID, wire.InvalidGroupID},
		{errUnknownMemberID, wire.UnknownMemberID},
		{errInvalidSessionTimeout, wire.InvalidSessionTimeout},
		{errRebalanceInProgress, wire.RebalanceInProgress},
		{errNonEmptyGroup, wire.NonEmptyGroup},
		{errGroupIDNotFound, wire.GroupIDNotFound},
		{errMemberIDRequired, wire.MemberIDRequired},
		{errGroupMaxSizeReached, wire.GroupMaxSizeReached},
		{errFencedInstanceID, wire.FencedInstanceID},
	}
	for _, c := range codes {
		if wire.ErrorCode(c.got) != c.want {
			t.Errorf("code %d, want %d (%s)", c.got, c.want, c.want)
		}
	}
}
