package main

import "github.com/spf13/cobra"

func configCommand() *cobra.Command { return &cobra.Command{Use: "config", Hidden: true} }
func initCommand() *cobra.Command   { return &cobra.Command{Use: "init", Hidden: true} }
