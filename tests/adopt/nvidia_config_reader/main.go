// Reads an NVIDIA device-plugin config file the way nvidia-device-plugin does and prints what it
// read as JSON: NVIDIA's own api/config/v1 code (github.com/NVIDIA/k8s-device-plugin, the version
// in go.mod), given the flags and environment variables of its command
// (cmd/nvidia-device-plugin/main.go: names, variables and defaults copied from there), then
// loadConfig's steps: spec.NewConfig, Flags.GFD dropped, spec.DisableResourceNamingInConfig.
//
// Usage: nvidia_config_reader CONFIG_FILE (the chart's values arrive as environment variables,
// as its daemonset-device-plugin.yml template sets them).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	spec "github.com/NVIDIA/k8s-device-plugin/api/config/v1"
	cli "github.com/urfave/cli/v2"
)

func main() {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "mig-strategy", Value: spec.MigStrategyNone, EnvVars: []string{"MIG_STRATEGY"}},
		&cli.BoolFlag{Name: "fail-on-init-error", Value: true, EnvVars: []string{"FAIL_ON_INIT_ERROR"}},
		&cli.BoolFlag{Name: "pass-device-specs", Value: false, EnvVars: []string{"PASS_DEVICE_SPECS"}},
		&cli.StringSliceFlag{Name: "device-list-strategy", Value: cli.NewStringSlice(string(spec.DeviceListStrategyEnvVar)), EnvVars: []string{"DEVICE_LIST_STRATEGY"}},
		&cli.StringFlag{Name: "device-id-strategy", Value: spec.DeviceIDStrategyUUID, EnvVars: []string{"DEVICE_ID_STRATEGY"}},
		&cli.StringFlag{Name: "config-file", EnvVars: []string{"CONFIG_FILE"}},
	}
	app := &cli.App{
		Flags: flags,
		Action: func(c *cli.Context) error {
			config, err := spec.NewConfig(c, flags)
			if err != nil {
				return err
			}
			config.Flags.GFD = nil
			spec.DisableResourceNamingInConfig(config)
			out, err := json.Marshal(config)
			if err != nil {
				return err
			}
			fmt.Println(string(out))
			return nil
		},
	}
	if err := app.Run(append([]string{"reader", "--config-file"}, os.Args[1:]...)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
