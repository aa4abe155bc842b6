package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubectl/internal/printer"
)

func newVersion(o *options) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client and server version information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.Out, "Client Version: %s\n", Version)
			if clientOnly {
				return nil
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			v, err := cl.ServerVersion(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Server Version: %s\n", v.GitVersion)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "If true, shows client version only (no server required).")
	return cmd
}

func newAPIResources(o *options) *cobra.Command {
	var noHeaders bool
	var namespaced string
	cmd := &cobra.Command{
		Use:   "api-resources",
		Short: "Print the supported API resources on the server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := o.client()
			if err != nil {
				return err
			}
			groupVersions := []string{"v1"}
			groups, err := cl.ServerGroups(cmd.Context())
			if err != nil {
				return err
			}
			for _, g := range groups.Groups {
				gv := g.PreferredVersion.GroupVersion
				if gv == "" && len(g.Versions) > 0 {
					gv = g.Versions[0].GroupVersion
				}
				groupVersions = append(groupVersions, gv)
			}
			lines := [][]string{{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}}
			if noHeaders {
				lines = nil
			}
			for _, gv := range groupVersions {
				l, err := cl.ServerResources(cmd.Context(), gv)
				if err != nil {
					return err
				}
				rs := l.APIResources
				sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
				for _, r := range rs {
					if strings.Contains(r.Name, "/") {
						continue // subresources are not listed
					}
					if namespaced != "" && fmt.Sprint(r.Namespaced) != namespaced {
						continue
					}
					lines = append(lines, []string{r.Name, strings.Join(r.ShortNames, ","), gv, fmt.Sprint(r.Namespaced), r.Kind})
				}
			}
			return printer.NewAligner(o.Out).Print(lines...)
		},
	}
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "When using the default output format, don't print headers.")
	cmd.Flags().StringVar(&namespaced, "namespaced", "", "If false, non-namespaced resources will be returned, otherwise returning namespaced resources by default.")
	return cmd
}

func newLogs(o *options) *cobra.Command {
	var opts corev1.PodLogOptions
	var tail int64
	cmd := &cobra.Command{
		Use:   "logs (POD | TYPE/NAME) [-c CONTAINER]",
		Short: "Print the logs for a container in a pod",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("expected POD or TYPE/NAME (job/pi, deployment/web) as the only argument")
			}
			ref, err := parsePodRef(args[0])
			if err != nil {
				return err
			}
			if tail >= 0 {
				opts.TailLines = &tail
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			// A Job, ReplicaSet, Deployment or Service stands for one of the pods it selects,
			// as kubectl picks it.
			name := ref.name
			if ref.res.Plural != "pods" {
				if !slices.Contains([]string{"jobs", "replicasets", "deployments", "services"}, ref.res.Plural) {
					return fmt.Errorf("cannot get the logs from %s: selector not supported", ref.res.Plural)
				}
				pod, err := attachablePod(cmd.Context(), cl, o.ns(), ref, 20*time.Second)
				if err != nil {
					return err
				}
				name = pod.Name
			}
			rc, err := cl.Logs(cmd.Context(), o.ns(), name, opts)
			if err != nil {
				return err
			}
			defer rc.Close()
			if _, err := io.Copy(o.Out, rc); err != nil && cmd.Context().Err() == nil {
				return fmt.Errorf("read logs: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Container, "container", "c", "", "Print the logs of this container")
	f.BoolVarP(&opts.Follow, "follow", "f", false, "Specify if the logs should be streamed.")
	f.BoolVarP(&opts.Previous, "previous", "p", false, "If true, print the logs for the previous instance of the container in a pod if it exists.")
	f.BoolVar(&opts.Timestamps, "timestamps", false, "Include timestamps on each line in the log output")
	f.Int64Var(&tail, "tail", -1, "Lines of recent log file to display. Defaults to -1, showing all log lines.")
	return cmd
}
