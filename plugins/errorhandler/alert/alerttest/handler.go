package alerttest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/spitest"
)

// Now is the fixed clock of the alerting tests (alert.Options.Now):
// 2026-11-23T10:00:00Z.
func Now() time.Time { return time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) }

// The failure the alerting tests report (Failure).
const (
	Job      = "orders"
	Instance = "10.0.0.5@-@4242"
	Item     = 2
	TaskID   = "orders@-@0,1,2@-@READY@-@10.0.0.5@-@4242"
	// Message holds what each channel must escape: < > & for HTML and
	// Slack, ' and = too for Gson (WECHAT, DINGTALK).
	Message = "exit status 3 <disk & full> 'y' = z"
	Detail  = "caused by *exec.ExitError: exit status 3\n"
)

// Failure is the failure the alerting tests report: item Item of job Job
// on instance Instance, in task TaskID, failed with Message and Detail.
func Failure(props map[string]string) spi.HandleErrorRequest {
	return spi.HandleErrorRequest{
		JobName: Job, InstanceID: Instance, TaskID: TaskID, ShardingItem: Item, Props: props,
		Error: spi.JobError{Message: Message, Detail: Detail},
	}
}

// Handler is an alerting handler: *alert.Handler.
type Handler interface {
	spi.ErrorHandler
	// Wait returns once no alert is queued or being sent.
	Wait(ctx context.Context) error
}

// Send reports req to h and waits until its alert is sent or given up;
// HandleError must succeed without asking to propagate.
func Send(t testing.TB, h Handler, req spi.HandleErrorRequest) {
	t.Helper()
	resp, err := h.HandleError(t.Context(), req)
	if err != nil || resp.Propagate {
		t.Fatalf("HandleError = %+v, %v", resp, err)
	}
	if err := h.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Invalid is props a handler must refuse, with an error containing Want.
type Invalid struct {
	Props map[string]string
	Want  string
}

// CheckInvalid checks that h's Validate refuses each case's props with an
// error wrapping spi.ErrInvalidConfig that contains the case's Want and
// none of secrets.
func CheckInvalid(t *testing.T, h spi.ErrorHandler, cases map[string]Invalid, secrets ...string) {
	t.Helper()
	for name, tc := range cases {
		err := h.Validate(t.Context(), spi.ValidatePropsRequest{JobName: Job, Props: tc.Props})
		if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.Want) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig with %q", name, err, tc.Want)
		}
		for _, s := range secrets {
			if err != nil && strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error quotes the secret %q: %v", name, s, err)
			}
		}
	}
}

// Conform runs spi/spitest's error-handler suite on h with valid props
// (the first also those of the suite's failure, a Failure) and invalid
// ones besides no props at all, then waits for h's alerts.
func Conform(t *testing.T, h Handler, valid []map[string]string, invalid map[string]map[string]string) {
	t.Helper()
	req := Failure(valid[0])
	bad := map[string]map[string]string{"none": nil}
	for k, v := range invalid {
		bad[k] = v
	}
	spitest.TestErrorHandler(t, h, &spitest.ErrorHandlerOptions{ValidProps: valid, InvalidProps: bad, Request: &req})
	if err := h.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
