package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/internal/version"
)

func newVersionCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and build information",
		Example: `  kubectl parley version
  kubectl parley version -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info := version.Get()
			switch output {
			case "":
				_, err := fmt.Fprintln(o.out(), "kubectl-parley "+info.String())
				return err
			case "json":
				b, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				return writeAll(o.out(), append(b, '\n'))
			case "yaml":
				b, err := yaml.Marshal(info)
				if err != nil {
					return err
				}
				return writeAll(o.out(), b)
			}
			return fmt.Errorf("unknown output format %q: use json or yaml", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml")
	return cmd
}
