// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

// Package repocheck holds tests about the repository itself rather than
// about lnx: every source file carries its licence line.
package repocheck
