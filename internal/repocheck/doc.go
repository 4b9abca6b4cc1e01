// Package repocheck holds tests about the repository itself rather than
// about lnx: every source file carries its licence line.
package repocheck
