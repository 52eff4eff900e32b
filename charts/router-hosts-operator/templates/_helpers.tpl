{{/* The chart's name, or nameOverride. */}}
{{- define "rho.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of every object the chart makes, scoped by the release so that two releases never
share a cluster-scoped ClusterRole: fullnameOverride, else the release's name when it already
contains the chart's, else "<release>-<name>".
*/}}
{{- define "rho.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "rho.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "rho.serviceAccountName" -}}
{{- default (include "rho.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "rho.labels" -}}
{{ include "rho.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "rho.selector" -}}
app.kubernetes.io/name: {{ include "rho.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The mTLS Secret the operator may read: the one the RouterHostsConfig names, else the mounted one. */}}
{{- define "rho.secretRef" -}}
{{- $ref := dict "name" .Values.routerHosts.tls.secretName "namespace" .Release.Namespace -}}
{{- with .Values.config.spec.server -}}{{- with .tlsSecretRef -}}{{- $ref = . -}}{{- end -}}{{- end -}}
{{- toJson $ref -}}
{{- end -}}

{{/* The leader Lease's name: the Deployment passes it, and the Role grants it alone. */}}
{{- define "rho.leaseName" -}}
{{- .Values.leaderElection.id | default (include "rho.fullname" .) -}}
{{- end -}}

{{/* The image: repository@digest when a digest is set (it pins the image, whatever the tag),
else repository:tag, the tag defaulting to the chart's own release. */}}
{{- define "rho.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default (printf "v%s" .Chart.AppVersion)) -}}
{{- end -}}
{{- end -}}

{{/* imagePullSecrets and an umbrella chart's global.imagePullSecrets (names or {name: ...}),
as a JSON list of {name: ...} without repeats. */}}
{{- define "rho.imagePullSecrets" -}}
{{- $out := list -}}
{{- $global := list -}}
{{- with .Values.global }}{{ $global = .imagePullSecrets | default list }}{{ end -}}
{{- range concat .Values.imagePullSecrets $global -}}
{{- $s := . -}}
{{- if kindIs "string" . }}{{ $s = dict "name" . }}{{ end -}}
{{- if not (has $s $out) }}{{ $out = append $out $s }}{{ end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The source kinds the operator runs, with "gateway" expanded to its three route kinds. */}}
{{- define "rho.sources" -}}
{{- $out := list -}}
{{- range .Values.sources -}}
{{- if eq . "gateway" -}}
{{- $out = concat $out (list "gateway-httproute" "gateway-grpcroute" "gateway-tlsroute") -}}
{{- else -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- toJson (uniq $out) -}}
{{- end -}}

{{/* The Gateway API route resources the enabled sources read, in a fixed order. */}}
{{- define "rho.routes" -}}
{{- $s := include "rho.sources" . | fromJsonArray -}}
{{- $out := list -}}
{{- range list (list "gateway-httproute" "httproutes") (list "gateway-grpcroute" "grpcroutes") (list "gateway-tlsroute" "tlsroutes") -}}
{{- if has (index . 0) $s }}{{ $out = append $out (index . 1) }}{{ end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
The rules on the sources' own objects: cluster-wide in the ClusterRole, or in the watched
namespace's Role when watchNamespace is set. Gateways are not among them: routes name Gateways in
any namespace, so the operator watches Gateways everywhere (the ClusterRole grants them).
*/}}
{{- define "rho.sourceRules" -}}
{{- $s := include "rho.sources" . | fromJsonArray -}}
{{- $routes := include "rho.routes" . | fromJsonArray -}}
{{- $cluster := not .Values.watchNamespace -}}
{{- if has "ingress" $s }}
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if has "service" $s }}
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if has "traefik" $s }}
- apiGroups: ["traefik.io", "traefik.containo.us"]
  resources: ["ingressroutes", "ingressroutetcps"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if $routes }}
- apiGroups: ["gateway.networking.k8s.io"]
  resources: {{ (ternary (prepend $routes "gateways") $routes $cluster) | toJson }}
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if $cluster }}
{{- include "rho.namespaceRule" . }}
{{- end }}
{{- if has "hostmapping" $s }}
- apiGroups: ["router-hosts.fzymgc.house"]
  resources: ["hostmappings"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["router-hosts.fzymgc.house"]
  resources: ["hostmappings/status"]
  verbs: ["patch", "update"]
{{- end }}
{{- end -}}

{{/* Namespaces: every namespace's labels for the Gateway API sources (allowedRoutes
selectors), else only kube-system, whose UID the installation's identity derives from. */}}
{{- define "rho.namespaceRule" -}}
{{- if include "rho.routes" . | fromJsonArray }}
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
{{- else }}
- apiGroups: [""]
  resources: ["namespaces"]
  resourceNames: ["kube-system"]
  verbs: ["get"]
{{- end }}
{{- end -}}

{{/*
The Services an --ip-resolution step names (service:<namespace>/<name> in ipResolution, a
Service or IngressController step of config.spec.ipResolution, and rbac.ipResolutionServices),
as a JSON map of namespace to names. The operator watches each by its name alone.
*/}}
{{- define "rho.resolutionServices" -}}
{{- $refs := list -}}
{{- range .Values.ipResolution -}}
{{- if hasPrefix "service:" . }}{{ $refs = append $refs (trimPrefix "service:" .) }}{{ end -}}
{{- end -}}
{{- if .Values.config.create -}}
{{- range .Values.config.spec.ipResolution | default list -}}
{{- if and (has .type (list "Service" "IngressController")) .serviceNamespace .serviceName -}}
{{- $refs = append $refs (printf "%s/%s" .serviceNamespace .serviceName) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $refs = concat $refs .Values.rbac.ipResolutionServices -}}
{{- $out := dict -}}
{{- range $refs -}}
{{- $parts := splitList "/" . -}}
{{- $ns := index $parts 0 -}}
{{- $names := get $out $ns | default list -}}
{{- $_ := set $out $ns (append $names (index $parts 1) | uniq) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
