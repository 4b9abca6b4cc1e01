// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package fi

import (
	"errors"
	"fmt"
	"syscall"
)

// Errno is a positive libfabric error number; C callers get its negation.
// Values below 256 are the POSIX errno values libfabric reuses.
type Errno int

const (
	EPERM         Errno = Errno(syscall.EPERM)
	ENOENT        Errno = Errno(syscall.ENOENT)
	EINTR         Errno = Errno(syscall.EINTR)
	EIO           Errno = Errno(syscall.EIO)
	E2BIG         Errno = Errno(syscall.E2BIG)
	EBADF         Errno = Errno(syscall.EBADF)
	EAGAIN        Errno = Errno(syscall.EAGAIN)
	ENOMEM        Errno = Errno(syscall.ENOMEM)
	EACCES        Errno = Errno(syscall.EACCES)
	EFAULT        Errno = Errno(syscall.EFAULT)
	EBUSY         Errno = Errno(syscall.EBUSY)
	ENODEV        Errno = Errno(syscall.ENODEV)
	EINVAL        Errno = Errno(syscall.EINVAL)
	EMFILE        Errno = Errno(syscall.EMFILE)
	ENOSPC        Errno = Errno(syscall.ENOSPC)
	ENOSYS        Errno = Errno(syscall.ENOSYS)
	ENODATA       Errno = Errno(syscall.ENODATA)
	EOVERFLOW     Errno = Errno(syscall.EOVERFLOW)
	EMSGSIZE      Errno = Errno(syscall.EMSGSIZE)
	ENOPROTOOPT   Errno = Errno(syscall.ENOPROTOOPT)
	EOPNOTSUPP    Errno = Errno(syscall.EOPNOTSUPP)
	EADDRINUSE    Errno = Errno(syscall.EADDRINUSE)
	EADDRNOTAVAIL Errno = Errno(syscall.EADDRNOTAVAIL)
	ENETDOWN      Errno = Errno(syscall.ENETDOWN)
	ENETUNREACH   Errno = Errno(syscall.ENETUNREACH)
	ECONNABORTED  Errno = Errno(syscall.ECONNABORTED)
	ECONNRESET    Errno = Errno(syscall.ECONNRESET)
	ENOBUFS       Errno = Errno(syscall.ENOBUFS)
	EISCONN       Errno = Errno(syscall.EISCONN)
	ENOTCONN      Errno = Errno(syscall.ENOTCONN)
	ESHUTDOWN     Errno = Errno(syscall.ESHUTDOWN)
	ETIMEDOUT     Errno = Errno(syscall.ETIMEDOUT)
	ECONNREFUSED  Errno = Errno(syscall.ECONNREFUSED)
	EHOSTDOWN     Errno = Errno(syscall.EHOSTDOWN)
	EHOSTUNREACH  Errno = Errno(syscall.EHOSTUNREACH)
	EALREADY      Errno = Errno(syscall.EALREADY)
	EINPROGRESS   Errno = Errno(syscall.EINPROGRESS)
	ECANCELED     Errno = Errno(syscall.ECANCELED)
	EKEYREJECTED  Errno = Errno(syscall.EKEYREJECTED)

	EOTHER      Errno = 256
	ETOOSMALL   Errno = 257
	EOPBADSTATE Errno = 258
	EAVAIL      Errno = 259
	EBADFLAGS   Errno = 260
	ENOEQ       Errno = 261
	EDOMAIN     Errno = 262
	ENOCQ       Errno = 263
	ECRC        Errno = 264
	ETRUNC      Errno = 265
	ENOKEY      Errno = 266
	ENOAV       Errno = 267
	EOVERRUN    Errno = 268
)

func (e Errno) Error() string { return fmt.Sprintf("libfabric error %d", int(e)) }

// Wrap attaches a libfabric code to a descriptive error, so that logs say
// what went wrong while C callers still get the right code.
func Wrap(code Errno, format string, args ...any) error {
	return &codedError{code: code, msg: fmt.Sprintf(format, args...)}
}

type codedError struct {
	code Errno
	msg  string
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// Code maps any error to the negative libfabric return value for C.
// nil maps to 0; an error without a code maps to -FI_EOTHER.
func Code(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(Errno); ok {
		// The data path's -FI_EAGAIN: errors.As would move e to the heap,
		// an allocation per busy send.
		return -int(e)
	}
	var e Errno
	if errors.As(err, &e) {
		return -int(e)
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return -int(se)
	}
	return -int(EOTHER)
}
