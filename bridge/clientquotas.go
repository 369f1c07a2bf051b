// The client quotas' book (docs/design/quotas.md §8): the quotas the flags
// set are the defaults of the default entities; AlterClientQuotas stores
// values of any entity in the system store, which the other instances on
// the same store read when it changes (sharedstate.go).

package bridge

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"net/netip"
	"time"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/quota"
)

// quotaNamespace is the system store namespace of client quotas: key
// quota.StoreKey (entity and quota key), value the quota as 8 big-endian
// bytes of a float64. One key a quota, so that gateways altering different
// quotas of an entity never overwrite each other; an alteration's keys of
// one entity are stored in one change (PutSystemAll).
const quotaNamespace = "client-quotas"

// Entities of the flags' quotas.
var (
	defaultClientEntity = quota.Entity{User: quota.Part{Kind: quota.Default}, ClientID: quota.Part{Kind: quota.Default}}
	defaultIPEntity     = quota.Entity{IP: quota.Part{Kind: quota.Default}}
)

// initQuotas builds the quota book from the flags and what the system
// store holds, and the meters.
func (g *Gateway) initQuotas() {
	cfg := &g.cfg
	client := quota.Values{}
	for k, v := range map[string]float64{
		quota.KeyRequestPercentage:      cfg.Quota.RequestPercentage,
		quota.KeyProducerByteRate:       float64(cfg.ProducerByteRate),
		quota.KeyConsumerByteRate:       float64(cfg.ConsumerByteRate),
		quota.KeyControllerMutationRate: cfg.ControllerMutationRate,
	} {
		if v > 0 {
			client[k] = v
		}
	}
	defaults := map[quota.Entity]quota.Values{}
	if len(client) > 0 {
		defaults[defaultClientEntity] = client
	}
	if cfg.ConnectionCreationRatePerIP > 0 {
		defaults[defaultIPEntity] = quota.Values{quota.KeyConnectionCreationRate: float64(cfg.ConnectionCreationRatePerIP)}
	}
	g.quotaBook = quota.NewBook(defaults)
	if err := g.reloadQuotas(g.ctx); err != nil {
		g.cfg.Logger.Warn("client quotas: reading the system store failed; the flags' quotas apply until it is read", "err", err)
	}
	q := &cfg.Quota
	g.quotas = quota.NewTracker(quota.Percent, q.Samples, q.Window, q.MaxClients)
	g.produceBytes = quota.NewTracker(quota.PerSecond, q.Samples, q.Window, q.MaxClients)
	g.fetchBytes = quota.NewTracker(quota.PerSecond, q.Samples, q.Window, q.MaxClients)
	g.mutations = quota.NewBucketSet(q.Samples, q.Window, q.MaxClients)
}

// reloadQuotas reads the stored quotas again into the book.
func (g *Gateway) reloadQuotas(ctx context.Context) error {
	raw, err := g.system.LoadSystem(ctx, quotaNamespace)
	if err != nil {
		return err
	}
	stored := map[quota.Entity]quota.Values{}
	for k, v := range raw {
		e, key, err := quota.ParseStoreKey(k)
		if err != nil || len(v) != 8 {
			g.cfg.Logger.Warn("client quotas: skipping a malformed stored quota", "key", k, "err", err)
			continue
		}
		if stored[e] == nil {
			stored[e] = quota.Values{}
		}
		stored[e][key] = math.Float64frombits(binary.BigEndian.Uint64(v))
	}
	if g.quotaBook.Set(stored) {
		g.resolveQuotaHosts(ctx)
	}
	return nil
}

// resolveQuotaHosts resolves the host names that name IP entities
// (quota.Book.HostNames), each within a second, and gives the book their
// addresses; a name that does not resolve applies to no connection until
// the quotas change again. Kafka resolves such a name when it applies the
// quota, once.
func (g *Gateway) resolveQuotaHosts(ctx context.Context) {
	names := g.quotaBook.HostNames()
	resolved := make(map[string][]netip.Addr, len(names))
	for _, name := range names {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(lctx, "ip", name)
		cancel()
		if err != nil {
			g.cfg.Logger.Warn("client quotas: an IP entity's host name does not resolve", "host", name, "err", err)
			continue
		}
		resolved[name] = addrs
	}
	g.quotaBook.SetHosts(resolved)
}

// storeEntityQuotas stores e's quotas changed from before to after in one
// change of the system store: an entity's alteration is stored whole or
// not at all, as Kafka replays an entity's records together.
func (g *Gateway) storeEntityQuotas(ctx context.Context, e quota.Entity, before, after quota.Values) error {
	var changes []store.SystemEntry
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			changes = append(changes, store.SystemEntry{Key: quota.StoreKey(e, k), Value: binary.BigEndian.AppendUint64(nil, math.Float64bits(v))})
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			changes = append(changes, store.SystemEntry{Key: quota.StoreKey(e, k)})
		}
	}
	if err := g.system.PutSystemAll(ctx, quotaNamespace, changes); err != nil {
		return err
	}
	g.noticeStateChange()
	return nil
}

// ConnectionCreationRate is ip's connection_creation_rate quota, 0 for
// none: the engine asks it for each connection (engine.Config).
func (g *Gateway) ConnectionCreationRate(ip netip.Addr) float64 {
	return g.quotaBook.IPLimit(ip)
}
