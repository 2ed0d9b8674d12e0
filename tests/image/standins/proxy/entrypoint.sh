#!/bin/bash
# The stand-in's start (see Containerfile), as the official nginx image's
# docker-entrypoint.sh does it for `nginx`: the executable /docker-entrypoint.d/*.envsh
# files are sourced and the *.sh ones run, in order, then
# /etc/nginx/templates/*.template are written to /etc/nginx/conf.d/ with the set
# environment variables filled in (only those: nginx's own $variables stay), then nginx.
set -euo pipefail
shopt -s nullglob
for script in /docker-entrypoint.d/*; do
  [[ -x $script ]] || continue
  case $script in
    *.envsh)
      # shellcheck disable=SC1090
      . "$script"
      ;;
    *.sh) "$script" ;;
  esac
  echo "stand-in nginx: ran $script"
done
defined=$(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/${\1}/p' | tr '\n' ' ')
for template in /etc/nginx/templates/*.template; do
  name=${template##*/}
  envsubst "$defined" <"$template" >"/etc/nginx/conf.d/${name%.template}"
  echo "stand-in nginx: /etc/nginx/conf.d/${name%.template} from $template"
done
exec "$@"
