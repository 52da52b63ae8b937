package ipc

import (
	"context"
	"errors"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// dying is a service whose daemon has gone: its reads and actions fail with err.
type dying struct {
	api.Service
	err error
}

func (d dying) Snapshot(context.Context) (api.Snapshot, error) {
	return api.Snapshot{}, d.err
}

func (d dying) Inject(context.Context, api.InjectRequest) (api.ActionResult, error) {
	return api.ActionResult{}, d.err
}

// opener opens the services in turn, counting.
type opener struct {
	svcs   []api.Service
	opens  int
	closed int
}

func (o *opener) open(context.Context) (facade.Service, func() error, error) {
	if o.opens >= len(o.svcs) {
		return nil, nil, ErrNoDaemon
	}
	s := o.svcs[o.opens]
	o.opens++
	return backend.New(s, backend.Parts{}), func() error { o.closed++; return nil }, nil
}

// A read that finds the daemon gone runs again on the service opened anew;
// an action whose connection was lost is not sent again (it may have
// happened), but one that found no daemon at all is sent to the new one.
func TestFailoverReopens(t *testing.T) {
	ctx := context.Background()
	live := newFake(t)

	o := &opener{svcs: []api.Service{dying{live, ErrConnLost}, live}}
	f := &Failover{Open: o.open}
	if err := f.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Snapshot(ctx); err != nil || o.opens != 2 || o.closed != 1 {
		t.Fatalf("snapshot after the daemon went: err %v, %d opens, %d closed; want a second open", err, o.opens, o.closed)
	}
	f.Close()
	if o.closed != 2 {
		t.Fatalf("Close closed %d services in all, want 2", o.closed)
	}

	o = &opener{svcs: []api.Service{dying{live, ErrConnLost}, live}}
	f = &Failover{Open: o.open}
	if err := f.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(ctx, api.InjectRequest{}); !errors.Is(err, ErrConnLost) || o.opens != 1 {
		t.Fatalf("inject on a lost connection: err %v after %d opens; want ErrConnLost and no new open", err, o.opens)
	}

	o = &opener{svcs: []api.Service{dying{live, ErrNoDaemon}, live}}
	f = &Failover{Open: o.open}
	if err := f.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(ctx, api.InjectRequest{}); errors.Is(err, ErrNoDaemon) || o.opens != 2 {
		t.Fatalf("inject with no daemon: err %v after %d opens; want it sent to a second service", err, o.opens)
	}

	// Nothing to open: the error says so.
	o = &opener{svcs: []api.Service{dying{live, ErrConnLost}}}
	f = &Failover{Open: o.open}
	if err := f.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Snapshot(ctx); !errors.Is(err, ErrConnLost) {
		t.Fatalf("snapshot with nothing to reopen: %v, want the lost connection", err)
	}
	if _, err := f.Snapshot(ctx); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("snapshot after a failed reopen: %v, want no daemon", err)
	}
}
