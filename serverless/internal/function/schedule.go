package function

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
)

// CronParser parses spec.schedules[].schedule, with the options the apiserver validates with.
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ScheduleCallTimeout bounds one scheduled call.
const ScheduleCallTimeout = 5 * time.Minute

// scheduler calls functions on their cron schedules.
type scheduler struct {
	caller Caller
	record func(key, schedule string, at time.Time, result string)
	log    *slog.Logger
	cron   *cron.Cron

	mu      sync.Mutex
	entries map[string]map[string]scheduled // function key -> schedule name
}

type scheduled struct {
	spec, input string
	id          cron.EntryID
}

func newScheduler(caller Caller, record func(key, schedule string, at time.Time, result string), log *slog.Logger) *scheduler {
	return &scheduler{caller: caller, record: record, log: log, cron: cron.New(cron.WithParser(CronParser)),
		entries: map[string]map[string]scheduled{}}
}

func (s *scheduler) start() { s.cron.Start() }

// stop stops the clock and waits for the calls under way.
func (s *scheduler) stop() { <-s.cron.Stop().Done() }

// set makes key's entries those of schedules.
func (s *scheduler) set(key string, schedules []serverlessv1.FunctionSchedule) {
	if s.caller == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	have := s.entries[key]
	want := map[string]scheduled{}
	for _, sc := range schedules {
		if e, ok := have[sc.Name]; ok && e.spec == sc.Schedule && e.input == sc.Input {
			want[sc.Name] = e
			continue
		}
		if e, ok := have[sc.Name]; ok {
			s.cron.Remove(e.id)
		}
		sched, err := CronParser.Parse(sc.Schedule)
		if err != nil {
			s.log.Warn("bad schedule", "key", key, "schedule", sc.Name, "err", err)
			continue
		}
		sc := sc
		id := s.cron.Schedule(sched, cron.FuncJob(func() { s.call(key, sc) }))
		want[sc.Name] = scheduled{spec: sc.Schedule, input: sc.Input, id: id}
	}
	for name, e := range have {
		if _, ok := want[name]; !ok {
			s.cron.Remove(e.id)
		}
	}
	if len(want) == 0 {
		delete(s.entries, key)
		return
	}
	s.entries[key] = want
}

func (s *scheduler) remove(key string) { s.set(key, nil) }

func (s *scheduler) call(key string, sc serverlessv1.FunctionSchedule) {
	ns, name := informer.SplitKey(key)
	input := sc.Input
	if input == "" {
		input = "{}"
	}
	at := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), ScheduleCallTimeout)
	defer cancel()
	result := "Succeeded"
	if _, err := s.caller.Call(ctx, ns, name, []byte(input)); err != nil {
		result = err.Error()
	}
	s.record(key, sc.Name, at, result)
}

// recordScheduleCall writes a schedule's last call into the function's status and an Event.
func (c *Controller) recordScheduleCall(key, schedule string, at time.Time, result string) {
	ns, name := informer.SplitKey(key)
	fn, err := c.functions.Get(ns, name)
	if err != nil {
		return
	}
	if result == "Succeeded" {
		c.cfg.Recorder.Eventf(fn, corev1.EventTypeNormal, "ScheduledCall", "schedule %s called the function", schedule)
	} else {
		c.cfg.Recorder.Eventf(fn, corev1.EventTypeWarning, "ScheduledCallFailed", "schedule %s: %s", schedule, result)
	}
	// One writer of status.schedules at a time: the list is replaced as a whole.
	c.scheduleMu.Lock()
	defer c.scheduleMu.Unlock()
	list := ScheduleStatuses(fn, c.lastSchedules[key], schedule, at, result)
	c.lastSchedules[key] = list
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"schedules": list}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := patchStatus(ctx, c.cfg.Functions, ns, name, patch); err != nil {
		c.log.Warn("recording a scheduled call", "key", key, "schedule", schedule, "err", fmt.Errorf("patch status: %w", err))
	}
}

// ScheduleStatuses is the status.schedules list after schedule called at: one entry per
// schedule the function still declares, from the newer of the stored list and the one last
// written (the cache may lag).
func ScheduleStatuses(fn *serverlessv1.Function, written []serverlessv1.FunctionScheduleStatus, schedule string, at time.Time, result string) []serverlessv1.FunctionScheduleStatus {
	newer := func(a, b *serverlessv1.FunctionScheduleStatus) *serverlessv1.FunctionScheduleStatus {
		if a == nil || (b != nil && a.LastScheduleTime.Before(b.LastScheduleTime)) {
			return b
		}
		return a
	}
	find := func(list []serverlessv1.FunctionScheduleStatus, name string) *serverlessv1.FunctionScheduleStatus {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
		return nil
	}
	t := metav1.NewTime(at)
	out := make([]serverlessv1.FunctionScheduleStatus, 0, len(fn.Spec.Schedules))
	for _, sc := range fn.Spec.Schedules {
		if sc.Name == schedule {
			out = append(out, serverlessv1.FunctionScheduleStatus{Name: sc.Name, LastScheduleTime: &t, LastResult: result})
			continue
		}
		if e := newer(find(fn.Status.Schedules, sc.Name), find(written, sc.Name)); e != nil {
			out = append(out, *e)
		}
	}
	return out
}
