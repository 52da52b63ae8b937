package api

import (
	"context"
	"errors"
	"testing"
)

type injectFunc func(InjectRequest) (ActionResult, error)

func (f injectFunc) Inject(_ context.Context, req InjectRequest) (ActionResult, error) { return f(req) }

func TestSendReminder(t *testing.T) {
	r := Reminder{Alert: 42, Pattern: "test_error_loop", Text: "run the tests once, then read them"}
	refused := errors.New("pane is dead")
	locked := errors.New("database is locked")
	for _, tt := range []struct {
		name      string
		res       ActionResult
		injectErr error
		recordErr error
		noRecord  bool
		recorded  bool
		wantErr   error
	}{
		{name: "typed and recorded", res: ActionResult{Delivered: true}, recorded: true},
		{name: "refused: not recorded", injectErr: refused, wantErr: refused},
		{name: "not taken by the pane: not recorded", res: ActionResult{Delivered: false}},
		{name: "typed, recording failed", res: ActionResult{Delivered: true}, recordErr: locked, recorded: true, wantErr: locked},
		{name: "typed, nothing records", res: ActionResult{Delivered: true}, noRecord: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got InjectRequest
			inj := injectFunc(func(req InjectRequest) (ActionResult, error) { got = req; return tt.res, tt.injectErr })
			var recorded []int64
			record := func(_ context.Context, alert int64) error { recorded = append(recorded, alert); return tt.recordErr }
			if tt.noRecord {
				record = nil
			}
			res, err := SendReminder(context.Background(), inj, "%4", r, "tui", record)
			if want := (InjectRequest{Target: Target{Pane: "%4"}, Text: r.Text, Origin: "tui"}); got != want {
				t.Errorf("injected %+v, want %+v", got, want)
			}
			if res.Delivered != tt.res.Delivered {
				t.Errorf("result %+v, want %+v", res, tt.res)
			}
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			var nr *NotRecordedError
			if errors.As(err, &nr) != (tt.recordErr != nil) {
				t.Errorf("err = %v: a *NotRecordedError exactly when recording failed", err)
			}
			if want := tt.recorded; (len(recorded) == 1 && recorded[0] == 42) != want || len(recorded) > 1 {
				t.Errorf("recorded %v, want alert 42 recorded: %v", recorded, want)
			}
		})
	}
}
