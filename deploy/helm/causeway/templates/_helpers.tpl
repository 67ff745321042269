{{- define "causeway.labels" -}}
app.kubernetes.io/part-of: causeway
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{- define "causeway.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{/* The restricted pod security standard's settings, shared by every pod and container. */}}
{{- define "causeway.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "causeway.containerSecurityContext" -}}
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
{{- end }}

{{/* The Secret (and ConfigMap) of the gateway's signing keys: one made beforehand, or its own. */}}
{{- define "causeway.signingKeys" -}}
{{ .Values.signingKeys.existingSecret | default .Values.signingKeys.name }}
{{- end }}
