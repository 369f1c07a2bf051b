package kafkawire

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAppendRequestMatchesKmsg checks the frames against franz-go's own
// request formatter, for a classic and a flexible header.
func TestAppendRequestMatchesKmsg(t *testing.T) {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	meta := kmsg.NewPtrMetadataRequest()
	api := kmsg.NewPtrApiVersionsRequest()
	api.ClientSoftwareName, api.ClientSoftwareVersion = "test", "1"
	for _, req := range []kmsg.Request{meta, api} {
		for _, v := range []int16{0, 3, 4, 9} {
			if v > req.MaxVersion() {
				continue
			}
			req.SetVersion(v)
			want := f.AppendRequest(nil, req, 7)
			if got := AppendRequest([]byte("x"), req, 7, "test"); !bytes.Equal(got[1:], want) {
				t.Errorf("%T v%d:\n got % x\nwant % x", req, v, got[1:], want)
			}
		}
	}
}
