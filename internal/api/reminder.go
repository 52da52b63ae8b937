package api

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotRecorded matches a *NotRecordedError, also across the socket: the
// reminder was typed but its sending was not recorded.
var ErrNotRecorded = errors.New("reminder sent but not recorded")

// Injector types text into a pane: Service's Inject.
type Injector interface {
	Inject(ctx context.Context, req InjectRequest) (ActionResult, error)
}

// NotRecordedError says a reminder was typed into its pane but recording
// that it was sent failed, so its effect will not be measured.
type NotRecordedError struct {
	Alert int64
	Err   error
}

func (e *NotRecordedError) Error() string {
	return fmt.Sprintf("reminder of alert %d was sent but not recorded: %v", e.Alert, e.Err)
}

func (e *NotRecordedError) Unwrap() error { return e.Err }

// Is makes a *NotRecordedError match ErrNotRecorded.
func (e *NotRecordedError) Is(target error) bool { return target == ErrNotRecorded }

// SendReminder is the one way a reminder reaches a pane, whoever sends it
// (the dashboard's r, MCP's request_intervention, an auto-sent pattern):
// it types r.Text into pane as origin and, only when the pane took it,
// calls record with r.Alert, so the coach measures the reminder from then
// on. record may be nil (nothing measures it). A failed record returns the
// injection's result with a *NotRecordedError.
func SendReminder(ctx context.Context, inj Injector, pane string, r Reminder, origin string, record func(ctx context.Context, alert int64) error) (ActionResult, error) {
	res, err := inj.Inject(ctx, InjectRequest{Target: Target{Pane: pane}, Text: r.Text, Origin: origin})
	if err != nil || !res.Delivered || record == nil {
		return res, err
	}
	if err := record(ctx, r.Alert); err != nil {
		return res, &NotRecordedError{Alert: r.Alert, Err: err}
	}
	return res, nil
}
