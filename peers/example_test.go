// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only

package peers_test

import (
	"fmt"

	"github.com/lnx-go/lnx-go/peers"
)

func ExampleQueue() {
	q := peers.NewQueue(true)

	// A message arrives before any receive: it is queued as unexpected.
	q.Arrive(&peers.Msg{Src: 3, Tag: 42, Size: 128, Ctx: "handle-1"})

	// An any-source receive for tag 42 takes it at once.
	if m := q.Post(&peers.Recv{Src: peers.AddrUnspec, Tag: 42, Ctx: "recv-1"}); m != nil {
		fmt.Println("matched", m.Ctx, "from", m.Src)
	}

	// A receive for tags 0x100-0x1ff from peer 3 waits for its message.
	q.Post(&peers.Recv{Src: 3, Tag: 0x100, Ignore: 0xff, Ctx: "recv-2"})
	if r := q.Arrive(&peers.Msg{Src: 3, Tag: 0x1ab, Ctx: "handle-2"}); r != nil {
		fmt.Println("completes", r.Ctx)
	}

	posted, unexpected, bytes := q.Stats()
	fmt.Println(posted, unexpected, bytes)
	// Output:
	// matched handle-1 from 3
	// completes recv-2
	// 0 0 0
}
