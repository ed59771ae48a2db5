#!/bin/sh
# convert.sh IN.cu OUT.cc: a CUDA source for the host emulation
# (include/emu_device.h): each launch kernel<<<grid, block, smem, stream>>>(args);
# becomes emu_launch(grid, block, smem, stream, (const void *)&kernel,
# [=] { kernel(args); }, "file.kernel"); (a missing smem or stream defaulting to 0; a
# template kernel, whose arguments may be deduced, passes no address, so it
# keeps the default 48 KiB limit), and each extern __shared__ array a
# pointer to the emulation's dynamic shared memory.
set -e
mkdir -p "$(dirname "$2")"
SRC=$(basename "$1" .cu) perl -0pe '
  s{\b(\w+(?:<[^<>;()]*>)?)<<<(.*?)>>>\((.*?)\);}{
    my ($k, $cfg, $args) = ($1, $2, $3);
    my @c = split /,(?![^()]*\))/, $cfg;
    push @c, "0" while @c < 4;
    my $id = $k =~ /</ ? "nullptr" : "(const void *)&$k";
    (my $name = $k) =~ s/<.*//s;
    "emu_launch(" . join(",", @c) . ", $id, [=] { $k($args); }, \"$ENV{SRC}.$name\");"
  }gse;
  s{extern __shared__ (?:__align__\(\d+\) )?(\w[\w ]*?) ?(\w+)\[\];}{$1 *$2 = ($1 *)emu_smem;}g;
' "$1" > "$2"
